#include <stdio.h>

int mod053(int x)
{
    return x + 53;
}
