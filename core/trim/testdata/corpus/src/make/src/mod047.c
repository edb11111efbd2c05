#include <stdio.h>

int mod047(int x)
{
    return x + 47;
}
