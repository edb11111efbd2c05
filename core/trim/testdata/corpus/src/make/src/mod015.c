#include <stdio.h>

int mod015(int x)
{
    return x + 15;
}
