#include <stdio.h>

int mod021(int x)
{
    return x + 21;
}
